"""Synthetic pingmesh results, written straight into rocefabd's database as the agents' rounds
would leave them (table probe_results): make bench's matrix benchmark and the dashboard's
scale test share them."""

COLS = "src, dst, op, size, label, t_ns, n, ok, lost, min_us, p50_us, p99_us, max_us, mean_us, path"


def fill(db, hosts, per_tor, inter, seconds, now, offset_ns=0):
    """`seconds` rounds ending at now - offset_ns, one a second: each of `hosts` hosts (named h<i>,
    `per_tor` under each leaf<t>) probes its ToR mates and `inter` hosts across, on 2 paths.
    db: an open sqlite3 connection (committed here).  Returns the number of rows."""
    rows, total = [], 0
    sql = f"INSERT OR REPLACE INTO probe_results({COLS}) VALUES({','.join('?' * 15)})"
    for r in range(seconds):
        t = now - r * 10**9 - offset_ns
        for i in range(hosts):
            tor = i // per_tor
            mates = [tor * per_tor + j for j in range(per_tor) if tor * per_tor + j != i]
            for d in mates + [(i + 37 * (k + 1)) % hosts for k in range(inter)]:
                for label in range(2):
                    p50 = 3.0 + ((i * 7 + d * 13 + r) % 100) / 100
                    rows.append((f"h{i}", f"h{d}", "write", 64, label, t, 10, 10, 0, p50 - 0.5, p50, p50 + 1,
                                 p50 + 2, p50, f'["h{i}-leaf{tor}","leaf{d // per_tor}-h{d}"]'))
        if len(rows) > 200000:
            db.executemany(sql, rows)
            total += len(rows)
            rows = []
    db.executemany(sql, rows)
    db.commit()
    return total + len(rows)
