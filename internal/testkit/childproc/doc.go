// Package childproc starts the programs the throwaway servers run (initdb, postgres, pgbouncer,
// etcd, Patroni) as children that die with the process that started them, and cleans up after a
// process that died without stopping them: the directories it named after its pid, and the
// servers still running from them. internal/testkit/pglocal and the soak's Patroni pair
// (soak/internal/pgcluster) launch through it.
//
// Guarantees:
//   - A child started by Start with SysProcAttr's death signal gets that signal when the OS
//     thread that forked it exits (Linux): Start keeps a thread locked for the child's whole life,
//     so only the death of the process fires it. Elsewhere there is no such signal; a directory
//     sweep (Sweep) stops what is left.
//   - A child leads a process group of its own (SysProcAttr sets Setpgid): a Ctrl-C at the
//     terminal reaches the parent only, and KillGroup reaches everything the child forked into
//     its group.
package childproc
