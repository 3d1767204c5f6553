package testsuite

// ServerEnv is serverEnv, for tests.
var ServerEnv = serverEnv
