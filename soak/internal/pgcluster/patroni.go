package pgcluster

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strconv"
)

// scope is the Patroni cluster's name (its keys in etcd live under /service/<scope>), also
// PostgreSQL's cluster_name, which shows in its process titles.
const scope = "pgsaga"

// patroniConfig is node n's Patroni configuration. It is written as JSON, which is YAML.
//
// What Patroni 3.0.2 and etcd 3.4 need, beyond the obvious:
//   - Patroni speaks etcd's v2 API here (its "etcd" section), which etcd 3.4 serves only with
//     --enable-v2, and not the v3 API (its "etcd3" section, through etcd's gRPC gateway). Patroni
//     3.0.2's etcd3 code renews an expired lease and then writes the leader key with it
//     unconditionally, from the cluster view it read before: a primary frozen in the middle of
//     its loop (a partition, a paused VM) takes the leader key back from the standby that was
//     promoted meanwhile, which is demoted and loses what it acknowledged (the failover tests
//     saw it: a COMMIT waiting on the old primary was acknowledged after all). Fixed in Patroni
//     3.0.3 (a transaction comparing the key's value); the v2 code has always updated the key
//     with prevValue=<own name>. Both need python3-etcd.
//   - primary_start_timeout (master_start_timeout before 3.0) defaults to 300s: a primary whose
//     postmaster died is restarted in place (crash recovery, holding the lock) rather than
//     failed over. 0 fails over at once when a standby may take over.
//   - wal_retrieve_retry_interval defaults to 5s: a standby whose first attempt to stream fails
//     (its replication slot is created by the primary's Patroni a moment later, or the new
//     primary is still promoting) waits that long before trying again, which made a fresh pair
//     take 7s to stream. 200ms here.
//   - pg_rewind (use_pg_rewind, so a demoted primary rejoins without a new base backup) needs
//     full_page_writes on (wal_log_hints, which it also needs, Patroni turns on itself).
//   - dynamic_shared_memory_type=mmap keeps PostgreSQL's segments in the data directory: with the
//     default (posix) a postmaster killed with SIGKILL leaves them in /dev/shm.
//   - The watchdog is off: there is none here, and Patroni 3.0.2 warns on every loop otherwise.
//   - In its REST API, 3.0.2 calls the primary's role "master" (later versions: "primary").
func (c *Cluster) patroniConfig(n *Node) map[string]any {
	cfg := c.cfg
	global := map[string]any{
		"max_connections":             300,
		"shared_buffers":              "32MB",
		"fsync":                       "off",
		"full_page_writes":            "on",
		"synchronous_commit":          "on",
		"wal_retrieve_retry_interval": "200ms",
		"dynamic_shared_memory_type":  "mmap",
		"wal_keep_size":               "128MB",
	}
	for k, v := range cfg.Settings {
		global[k] = v
	}
	local := map[string]any{"unix_socket_directories": n.dir}
	pgHBA := []string{
		"local all all trust",
		"local replication all trust",
		"host all all 127.0.0.1/32 trust",
		"host replication all 127.0.0.1/32 trust",
	}
	user := map[string]any{"username": "postgres"}
	return map[string]any{
		"scope": scope,
		"name":  n.Name,
		"log":   map[string]any{"level": "INFO", "format": "%(asctime)s %(levelname)s: %(message)s"},
		"restapi": map[string]any{
			"listen":          "127.0.0.1:" + strconv.Itoa(n.apiPort),
			"connect_address": "127.0.0.1:" + strconv.Itoa(n.apiPort),
		},
		"etcd":     map[string]any{"hosts": []string{"127.0.0.1:" + strconv.Itoa(c.etcdPort)}},
		"watchdog": map[string]any{"mode": "off"},
		"bootstrap": map[string]any{
			"dcs": map[string]any{
				"ttl":                     int(cfg.TTL.Seconds()),
				"loop_wait":               int(cfg.LoopWait.Seconds()),
				"retry_timeout":           int(cfg.RetryTimeout.Seconds()),
				"maximum_lag_on_failover": cfg.MaximumLagOnFailover,
				"synchronous_mode":        cfg.Synchronous,
				"synchronous_mode_strict": cfg.SynchronousStrict,
				"primary_start_timeout":   0,
				"postgresql": map[string]any{
					"use_pg_rewind": true,
					"use_slots":     true,
					"parameters":    global,
				},
			},
			"initdb": []any{map[string]any{"encoding": "UTF8"}, "no-locale", "no-sync"},
			"pg_hba": pgHBA,
		},
		"postgresql": map[string]any{
			"listen":          "127.0.0.1:" + strconv.Itoa(n.Port),
			"connect_address": "127.0.0.1:" + strconv.Itoa(n.Port),
			"data_dir":        n.dataDir(),
			"bin_dir":         c.binDir,
			"pgpass":          filepath.Join(n.dir, "pgpass"),
			"pg_hba":          pgHBA,
			"authentication":  map[string]any{"superuser": user, "replication": user, "rewind": user},
			"parameters":      maps.Clone(local),
			// A rewind that fails, or a timeline that cannot be followed, is repaired with a new
			// base backup (the data is small) rather than left for an operator.
			"remove_data_directory_on_rewind_failure":     true,
			"remove_data_directory_on_diverged_timelines": true,
		},
	}
}

// writePatroniConfig writes node n's configuration file and gives it to the owner.
func (c *Cluster) writePatroniConfig(n *Node) error {
	b, err := json.MarshalIndent(c.patroniConfig(n), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(n.configPath(), b, 0o600); err != nil {
		return err
	}
	return c.owner.Chown(n.configPath())
}
