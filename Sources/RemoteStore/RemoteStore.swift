/// The remote (Supabase/PostgREST or embedded) behind one protocol.
///
/// Filled by the RemoteStore issue; present now to fix the package layout.
public enum RemoteStoreModule {}
