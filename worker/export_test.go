package worker

// RiverLogger is riverLogger, for the external tests.
var RiverLogger = riverLogger
