import Foundation
import SecretCrypto

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The device's X25519 private key on disk: exactly 32 raw bytes, mode 0600, owned by the user.
///
/// Written with `AtomicFile` (a `0600` temporary file created with `O_EXCL`, fsynced, linked
/// to the target, directory fsynced: a killed writer leaves no key or the whole key) and loaded
/// only when nobody else can read it, as ssh insists for private keys.
public enum DeviceKeyFile {
    /// Writes `key` to `path`, refusing to replace an existing file.
    ///
    /// - Throws: ``LocalStoreError`` with `.identityExists` or `.io`.
    public static func create(_ key: X25519PrivateKey, at path: String) throws {
        try create(bytes: key.rawRepresentation, at: path)
    }

    /// Writes 32 secret bytes to `path`, refusing to replace an existing file (link() makes the
    /// creation atomic: two processes creating the same key cannot both win).
    ///
    /// - Throws: ``LocalStoreError`` with `.identityExists` or `.io`.
    static func create(bytes: SecureBytes, at path: String) throws {
        guard access(path, F_OK) != 0 else {
            throw LocalStoreError(.identityExists, "a device key already exists at \(path)")
        }
        do {
            // link() fails if the target appeared meanwhile, so two initialisations cannot both win.
            try bytes.withUnsafeBytes { try AtomicFile.write($0, to: path, replacing: false) }
        } catch let error as LocalStoreError where error.code == .identityExists {
            throw LocalStoreError(.identityExists, "a device key already exists at \(path)")
        }
    }

    /// Loads the key at `path`.
    ///
    /// - Throws: ``LocalStoreError`` with `.keyFileMissing`, `.keyFileTooOpen` (group or others
    ///   have any permission, or another user owns it) or `.keyFileMalformed` (not a regular
    ///   file of exactly 32 bytes).
    public static func load(from path: String) throws -> X25519PrivateKey {
        try X25519PrivateKey(rawRepresentation: loadBytes(from: path))
    }

    /// Loads the Ed25519 signing key (its 32-byte seed) at `path`, under the same rules as
    /// ``load(from:)``.
    public static func loadSigningKey(from path: String) throws -> Ed25519PrivateKey {
        try Ed25519PrivateKey(seed: loadBytes(from: path))
    }

    /// The 32 secret bytes at `path`, under the same rules as ``load(from:)``.
    static func loadBytes(from path: String) throws -> SecureBytes {
        // O_NONBLOCK: opening a FIFO planted as the key file must fail the type check below,
        // not block until some writer appears.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else {
            if errno == ENOENT {
                throw LocalStoreError(.keyFileMissing, "no device key at \(path); run `sync-cli init` first")
            }
            if errno == ELOOP {
                throw LocalStoreError(.keyFileMalformed, "\(path) is a symbolic link; refusing to use it")
            }
            throw ioError("cannot open \(path)")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw ioError("cannot stat \(path)") }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw LocalStoreError(.keyFileMalformed, "\(path) is not a regular file")
        }
        let permissions = info.st_mode & 0o777
        guard permissions & 0o077 == 0 else {
            throw LocalStoreError(
                .keyFileTooOpen,
                String(
                    format:
                        "permissions 0%o for %@ are too open: the device key must not be accessible by others (chmod 600 %@)",
                    permissions, path, path))
        }
        guard info.st_uid == geteuid() else {
            throw LocalStoreError(.keyFileTooOpen, "\(path) is owned by uid \(info.st_uid), not by the current user")
        }
        guard info.st_size == off_t(X25519PrivateKey.byteCount) else {
            throw LocalStoreError(
                .keyFileMalformed, "\(path) is \(info.st_size) bytes; a device key is exactly 32 raw bytes")
        }
        let key = try SecureBytes(count: X25519PrivateKey.byteCount) { buffer in
            var total = 0
            while total < buffer.count {
                let n = read(descriptor, buffer.baseAddress! + total, buffer.count - total)
                if n <= 0 { break }
                total += n
            }
            if total != buffer.count { throw LocalStoreError(.keyFileMalformed, "\(path) could not be read in full") }
        }
        return key
    }

    static func ioError(_ message: String) -> LocalStoreError {
        LocalStoreError.fromErrno(errno, message)
    }
}
