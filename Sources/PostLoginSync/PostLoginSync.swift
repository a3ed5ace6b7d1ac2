import LocalStore
import RemoteStore
import SecretCrypto

/// The post-login sync orchestrator.
///
/// Push and pull arrive with the PostLoginSync issue; this target exists now so the package
/// layout and its one-way dependencies (PostLoginSync -> stores, crypto) are fixed.
public enum PostLoginSyncModule {}
