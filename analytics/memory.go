package analytics

import (
	"context"
	"fmt"
)

// MemoryTag is DuckDB's own accounting of one kind of memory (duckdb_memory()): what its
// buffer manager holds in memory and what it spilled to temporary files. DuckDB's other C++
// objects (metadata of row groups and segments, query state) come from malloc and are not
// in it (see MallocStats).
type MemoryTag struct {
	Tag       string `json:"tag"`
	Bytes     int64  `json:"bytes"`
	TempBytes int64  `json:"temp_bytes"`
}

// Memory reads DuckDB's memory limit (as DuckDB prints it) and its memory accounting, largest
// tag first; tags holding nothing are left out.
func (db *DB) Memory(ctx context.Context) (limit string, tags []MemoryTag, err error) {
	if err := db.Query().QueryRowContext(ctx, `SELECT current_setting('memory_limit')`).Scan(&limit); err != nil {
		return "", nil, fmt.Errorf("analytics: memory_limit: %w", err)
	}
	rows, err := db.Query().QueryContext(ctx, `SELECT tag, memory_usage_bytes, temporary_storage_bytes
		FROM duckdb_memory() WHERE memory_usage_bytes > 0 OR temporary_storage_bytes > 0
		ORDER BY memory_usage_bytes DESC, tag`)
	if err != nil {
		return "", nil, fmt.Errorf("analytics: duckdb_memory: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var m MemoryTag
		if err := rows.Scan(&m.Tag, &m.Bytes, &m.TempBytes); err != nil {
			return "", nil, err
		}
		tags = append(tags, m)
	}
	return limit, tags, rows.Err()
}

// MemoryUsage is the sum of DuckDB's own accounting (duckdb_memory()): bytes in memory and bytes
// spilled to temporary files. It waits at most until ctx ends to be let in (a reattach or the
// commit of a move holds queries back), but the query itself is not given ctx: a DuckDB query
// interrupted through its context can keep the instance referenced (docs/ARCHITECTURE.md,
// "DuckDB contexts"), and this one only reads counters.
func (d *DB) MemoryUsage(ctx context.Context) (mem, temp int64, err error) {
	err = d.read(ctx, func() error {
		return d.sql.QueryRowContext(context.Background(), `SELECT coalesce(sum(memory_usage_bytes), 0)::BIGINT,
			coalesce(sum(temporary_storage_bytes), 0)::BIGINT FROM duckdb_memory()`).Scan(&mem, &temp)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("analytics: duckdb_memory: %w", err)
	}
	return mem, temp, nil
}
