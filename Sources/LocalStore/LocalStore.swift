/// The device's own SQLite store.
///
/// Identity, key file, repositories, sessions, sealed secrets, ledger and cursors arrive with
/// the LocalStore issue; this target exists now so the package layout and dependency
/// direction are fixed from the start.
public enum LocalStoreModule {}
