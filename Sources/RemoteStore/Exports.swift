// The contract the client implements (protocols, records, errors) comes with it: an app that
// imports RemoteStore sees `SyncRemote` and the rest without naming RemoteContract.
@_exported import RemoteContract
