package worker

// RiverLogger is riverLogger, for the external tests.
var RiverLogger = riverLogger

// SweepLockID is the sweep's advisory lock, for the external tests.
const SweepLockID = sweepLockID
