"""make bench: the sonic backend's cost per collection of a 64-port SONiC switch (every port's
counters, its 8 queues and 8 priority groups, inventory and the report), in the agent and in the
switch's redis-server, on a real redis-server filled as SONiC fills it (tests/system/sonic.py).

usage: bench_sonic.py BUILD_DIR [ITERATIONS]"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "system"))
from sonic import Redis, SonicSwitch  # noqa: E402


def main():
    build = sys.argv[1]
    iters = sys.argv[2] if len(sys.argv) > 2 else "200"
    with tempfile.TemporaryDirectory(prefix="rocefab-bench-sonic-") as tmp:
        r = Redis(tmp).start()
        try:
            SonicSwitch(r, hostname="bench", nports=64).write()
            out = subprocess.run([os.path.join(build, "bench", "bench_agent"), "--sonic", r.address,
                                  str(r.proc.p.pid), iters], capture_output=True, text=True, timeout=600)
            sys.stdout.write(out.stdout)
            sys.stderr.write(out.stderr)
            return out.returncode
        finally:
            r.stop()


if __name__ == "__main__":
    sys.exit(main())
