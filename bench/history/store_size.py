"""The run history's size per 1,000 runs of the Fashion-MNIST example: one real
`codefy run examples/fashion-mnist/graph.json` recorded into a fresh store, then
that run (its record and every series point) copied under 999 new ids in the
same database, as 999 more runs of the same graph would store it; prints the
file's size after a checkpoint and VACUUM, per run and per 1,000 runs. Run from
the repository root after building: python3 bench/history/store_size.py
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CODEFY = os.path.join(ROOT, "build", "codefy")


def file_bytes(db):
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.execute("VACUUM")
    con.close()
    return os.path.getsize(db)


def main():
    data = tempfile.mkdtemp(prefix="codefy-store-size-")
    graph = os.path.join(ROOT, "examples", "fashion-mnist", "graph.json")
    out = subprocess.run([CODEFY, "run", graph, "--json", "--data-dir", data, "--out", os.path.join(data, "out")],
                         cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("codefy run failed:\n" + out.stdout[-2000:] + out.stderr[-2000:])
    db = os.path.join(data, "runs.db")
    one = file_bytes(db)

    con = sqlite3.connect(db)
    (run_id,) = con.execute("SELECT id FROM runs").fetchone()
    points = con.execute("SELECT count(*) FROM series WHERE run_id = ?", (run_id,)).fetchone()[0]
    names = [r[0] for r in con.execute("SELECT DISTINCT name FROM series WHERE run_id = ? ORDER BY name", (run_id,))]
    columns = [r[1] for r in con.execute("PRAGMA table_info(runs)")]
    series_columns = [r[1] for r in con.execute("PRAGMA table_info(series)") if r[1] != "run_id"]
    with con:
        for i in range(1, 1000):
            new_id = f"{run_id}-copy{i:03d}"
            picked = ", ".join("?" if c == "id" else c for c in columns)
            con.execute(f"INSERT INTO runs ({', '.join(columns)}) SELECT {picked} FROM runs WHERE id = ?",
                        (new_id, run_id))
            cols = ", ".join(series_columns)
            con.execute(f"INSERT INTO series (run_id, {cols}) SELECT ?, {cols} FROM series WHERE run_id = ?",
                        (new_id, run_id))
    con.close()
    thousand = file_bytes(db)
    print(json.dumps({"series_points_per_run": points, "series": names, "one_run_bytes": one,
                      "thousand_runs_bytes": thousand, "bytes_per_run": round(thousand / 1000),
                      "thousand_runs_mib": round(thousand / 2**20, 1)}, indent=1))


if __name__ == "__main__":
    main()
