// Package pgcluster runs a throwaway replicated PostgreSQL under Patroni, for failover tests: one
// etcd (Patroni's distributed configuration store, through its v2 API: see patroniConfig for why
// not v3 with Patroni 3.0.2) and two Patroni nodes, each managing a PostgreSQL server; one node
// is the primary, the other streams from it as a standby and takes over when the primary fails.
//
// Start bootstraps the pair in a new directory under Config.BaseDir (/dev/shm when it can) and
// returns once the standby streams (and is the synchronous standby, in Config.Synchronous mode).
// URL is a multi-host URL with target_session_attrs=read-write, as a service in production would
// use: it reaches whichever node is the primary. The faults are the ones a failover test needs:
//
//   - KillPrimary: kill -9 of the primary's postmaster. Patroni is told (primary_start_timeout 0)
//     to fail over at once rather than restart the crashed primary in place.
//   - PartitionPrimary: the whole primary node (its Patroni and every PostgreSQL process) is
//     frozen with SIGSTOP until Heal, as a paused VM or a node cut off in both directions is: its
//     clients' connections hang, it cannot renew the leader lock, and the standby is promoted once
//     the lock's TTL runs out. Healed, the old primary still believes it is the primary until its
//     Patroni's next loop finds the lock lost and demotes it (an immediate shutdown: its sessions
//     are cut); a commit it takes in that window waits for a synchronous standby that is gone.
//   - Switchover: Patroni's planned switchover (REST /switchover).
//   - LossyFailover (asynchronous mode only): the primary acknowledges commits that never reach
//     the standby, then dies; the standby is promoted without them.
//
// Guarantees:
//   - Nothing is left after Stop: no process, no directory. The processes run as our children
//     with a parent-death signal (Linux), and a guardian process (a small sh script reading a pipe
//     from us) kills every process group of the cluster, PostgreSQL's included (Patroni starts
//     the postmaster in a session of its own, out of our reach otherwise), and removes the
//     directory when this process dies without calling Stop, even from kill -9. A directory left
//     anyway (pgsaga-pc-<pid>-*) is removed by the next Start in the same BaseDir (see Sweep).
//   - When the calling process is root, etcd, Patroni and PostgreSQL run as an unprivileged user
//     (Config.RunAsUser); otherwise as the current user.
//   - Everything listens on 127.0.0.1 only, on free ports; authentication is trust, superuser
//     "postgres". fsync is off (the WAL still reaches the kernel before a commit is acknowledged,
//     so a killed process loses nothing a machine crash would not): for tests only.
package pgcluster
