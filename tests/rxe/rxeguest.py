"""The soft-RoCE guest, for tests/rxe/test_rxe.py and make bench (tests/bench/bench_rxe.py):
the kernel fetched once into build/rxe, an initramfs from tests/rxe/init, and QEMU guests that
run a script of tests/rxe/ in a chroot on the host's root and hand back JSON lines through their
second serial port (tests/rxe/README.md)."""
import json
import os
import socket
import subprocess
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, os.environ.get("ROCEFAB_BUILD", "build"))
CACHE = os.path.join(ROOT, "build", "rxe")  # shared by build/ and build/san/
HERE = os.path.dirname(os.path.abspath(__file__))
USERSPACE = os.path.join(CACHE, "userspace")  # rdma-core as downloaded by setup.sh


def userspace_versions():
    """'pkg=version ...' of the rdma-core packages setup.sh downloaded (the guests report theirs)."""
    with open(os.path.join(USERSPACE, "etc", "rocefab-rxe-userspace")) as f:
        return f.read().strip()


def udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def guest_image(fail):
    """The kernel (fetched once into build/rxe) and an initramfs built from tests/rxe/init."""
    for tool in ("qemu-system-x86_64", "/bin/busybox"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode:
            fail(f"{tool} is missing: run packaging/install-deps.sh rxe")
    os.makedirs(CACHE, exist_ok=True)
    out = subprocess.run([os.path.join(HERE, "setup.sh"), CACHE], capture_output=True, text=True,
                         timeout=600)
    if out.returncode:
        fail(out.stderr)
    kernel, kv = out.stdout.split()[-2:]
    initrd = os.path.join(CACHE, "initrd.gz")
    out = subprocess.run([os.path.join(HERE, "build-initrd.sh"), CACHE, initrd], capture_output=True,
                         text=True, timeout=300)
    if out.returncode:
        fail(out.stderr)
    return kernel, initrd, kv


class Guest:
    """One QEMU guest running tests/rxe/<script> in a chroot on the host's root."""

    def __init__(self, image, name, script, args, net=None, mac=None, mem=1024, smp=2):
        kernel, initrd, _ = image
        self.name = name
        self.log = os.path.join(CACHE, f"{name}.log")
        self.results = os.path.join(CACHE, f"{name}.results")
        if os.path.exists(self.results):
            os.unlink(self.results)
        append = (f"console=ttyS0 quiet panic=-1 rxe_script={HERE}/{script} "
                  f"rxe_args={','.join(str(a) for a in args)} rxe_userspace={USERSPACE}")
        self.cmd = ["qemu-system-x86_64", "-accel", "tcg,thread=multi", "-cpu", "max", "-m", str(mem),
                    "-smp", str(smp), "-kernel", kernel, "-initrd", initrd, "-append", append,
                    "-nographic", "-serial", "mon:stdio", "-serial", f"file:{self.results}",
                    "-no-reboot", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
                    "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"]
        if net:
            self.cmd += ["-netdev", f"socket,id=n0,udp=127.0.0.1:{net[1]},localaddr=127.0.0.1:{net[0]}",
                         "-device", f"virtio-net-pci,netdev=n0,mac={mac}"]
        else:
            self.cmd += ["-nic", "none"]
        self.p = None

    def start(self):
        self.t0 = time.monotonic()
        self.p = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=open(self.log, "wb"),
                                  stderr=subprocess.STDOUT)
        return self

    def wait(self, timeout):
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise AssertionError(f"{self.name}: no result after {timeout} s; console in {self.log}")
        self.seconds = time.monotonic() - self.t0
        # isa-debug-exit: QEMU exits with (status << 1) | 1
        status = rc >> 1 if rc & 1 else None
        lines = []
        if os.path.exists(self.results):
            with open(self.results, "rb") as f:
                for raw in f.read().decode(errors="replace").replace("\r", "").splitlines():
                    if raw.startswith("{"):
                        lines.append(json.loads(raw))
        assert lines and lines[-1].get("test") == "done", \
            f"{self.name}: the guest did not finish (qemu rc {rc}); console in {self.log}"
        return status, lines

    def kill(self):
        if self.p and self.p.poll() is None:
            self.p.kill()
            self.p.wait()
