// The stack's environment lives in TestStack (shared with sync-bench, which is not a test);
// every test that imports the support code gets it too.
@_exported import TestStack
