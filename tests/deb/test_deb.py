"""The Debian packages (make deb, run by make check-deb before this): lintian clean at its
default level (make deb fails otherwise), the three packages with their files, conffiles and
units, installed with dpkg into a fresh tree (its own dpkg database, --root) with the
configuration readable by the services' groups only, upgraded, and the installed programs run:
rocefabd --version and token add, rocefab-agent --once on a recorded host, rocefabctl --help;
the services restarted on upgrade and stopped on removal."""
import glob
import os
import shutil
import subprocess
import tempfile

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEB = os.path.join(ROOT, "build", "deb")


def debs():
    found = {os.path.basename(p).split("_")[0]: p for p in glob.glob(os.path.join(DEB, "*.deb"))
             if "dbgsym" not in p}
    assert set(found) == {"rocefabd", "rocefab-agent", "rocefab-tools"}, found
    return found


def contents(deb):
    out = subprocess.run(["dpkg-deb", "--contents", deb], capture_output=True, text=True, check=True).stdout
    return {l.split()[-1].lstrip(".") for l in out.splitlines()}


def test_packages_hold_what_they_should():
    d = debs()
    files = {k: contents(v) for k, v in d.items()}
    assert {"/usr/sbin/rocefabd", "/lib/systemd/system/rocefabd.service", "/etc/rocefab/rocefabd.conf",
            "/usr/lib/sysusers.d/rocefabd.conf", "/usr/share/rocefab/web/index.html",
            "/usr/share/rocefab/prometheus/rocefab.rules.yml", "/usr/share/man/man8/rocefabd.8.gz"} <= files["rocefabd"]
    assert {"/usr/sbin/rocefab-agent", "/lib/systemd/system/rocefab-agent.service",
            "/etc/rocefab/rocefab-agent.conf"} <= files["rocefab-agent"]
    assert {"/usr/bin/rocefabctl", "/usr/bin/rocefab-probe", "/usr/bin/rocefab-sim",
            "/usr/share/bash-completion/completions/rocefabctl"} <= files["rocefab-tools"]
    conffiles = subprocess.run(["dpkg-deb", "--ctrl-tarfile", d["rocefabd"]], capture_output=True).stdout
    assert b"conffiles" in conffiles
    info = subprocess.run(["dpkg-deb", "--field", d["rocefabd"], "Depends", "Version"], capture_output=True,
                          text=True, check=True).stdout
    with open(os.path.join(ROOT, "VERSION")) as f:
        assert f"Version: {f.read().strip()}" in info
    assert "libmicrohttpd" in info and "libsqlite3" in info


def test_services_restart_on_upgrade_and_stop_on_removal():
    """Enabled, not started at installation (they need a configuration and a token); an upgrade
    restarts a running service (try-restart: a stopped one stays stopped) and does not stop it
    first; a removal stops it.  The maintainer scripts as built (no systemd here to run them)."""
    for pkg, unit in (("rocefabd", "rocefabd.service"), ("rocefab-agent", "rocefab-agent.service")):
        tmp = tempfile.mkdtemp(prefix="rocefab-ctrl-")
        try:
            subprocess.run(["dpkg-deb", "--control", debs()[pkg], tmp], check=True)
            read = lambda n: open(os.path.join(tmp, n)).read() if os.path.exists(os.path.join(tmp, n)) else ""
            postinst, prerm, preinst = read("postinst"), read("prerm"), read("preinst")
            unquoted = lambda t: t.replace("'", "")
            assert f"deb-systemd-invoke try-restart {unit}" in unquoted(postinst), postinst
            assert "deb-systemd-invoke start" not in postinst
            assert "deb-systemd-invoke stop" not in preinst  # not stopped before an upgrade
            assert '"$1" = remove' in prerm and f"deb-systemd-invoke stop {unit}" in unquoted(prerm), prerm
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def test_installed_with_dpkg_into_a_fresh_tree_and_run():
    d = debs()
    tree = tempfile.mkdtemp(prefix="rocefab-deb-")
    try:
        admin = os.path.join(tree, "var", "lib", "dpkg")
        for sub in ("info", "updates", "triggers"):
            os.makedirs(os.path.join(admin, sub))
        open(os.path.join(admin, "status"), "w").close()
        # the tree has no shell or libraries of its own: the maintainer scripts run from the host,
        # told the tree (DPKG_ROOT): they create the users and enable the units there, not here
        dpkg = ["dpkg", f"--root={tree}", "--force-depends", "--force-script-chrootless", "--force-not-root",
                "--no-triggers"]
        env = dict(os.environ, DPKG_ROOT=tree)
        with open("/etc/passwd") as f:
            host_users = f.read()
        r = subprocess.run(dpkg + ["--unpack"] + list(d.values()), capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        r = subprocess.run(dpkg + ["--configure", "-a"], capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        status = subprocess.run(["dpkg", f"--root={tree}", "-l"], capture_output=True, text=True).stdout
        assert all(f"ii  {p} " in status for p in d), status
        with open(os.path.join(tree, "etc", "passwd")) as f:
            users = f.read()
        assert "\nrocefab:" in "\n" + users and "\nrocefab-agent:" in "\n" + users, users
        # the configuration: the service's group may read it, no other user (as make install)
        with open(os.path.join(tree, "etc", "group")) as f:
            gids = {l.split(":")[0]: int(l.split(":")[2]) for l in f if l.count(":") >= 3}
        for name, group in (("rocefabd.conf", "rocefab"), ("rocefab-agent.conf", "rocefab-agent")):
            st = os.stat(os.path.join(tree, "etc", "rocefab", name))
            assert (st.st_mode & 0o7777, st.st_uid, st.st_gid) == (0o640, 0, gids[group]), name
        wants = os.path.join(tree, "etc", "systemd", "system", "multi-user.target.wants")
        assert sorted(os.listdir(wants)) == ["rocefab-agent.service", "rocefabd.service"]
        with open("/etc/passwd") as f:
            assert f.read() == host_users  # the machine's own users untouched
        run = lambda *a: subprocess.run([os.path.join(tree, a[0].lstrip("/"))] + list(a[1:]), capture_output=True,
                                         text=True, timeout=30)
        r = run("/usr/sbin/rocefabd", "--version")
        assert r.returncode == 0 and r.stdout.startswith("rocefabd "), r.stderr
        conf = os.path.join(tree, "etc", "rocefab", "rocefabd.conf")
        r = run("/usr/sbin/rocefabd", "--config", conf, "-o", f"store.db={tree}/rocefab.db", "token", "add",
                "ops", "--role", "viewer")
        assert r.returncode == 0 and r.stdout.strip().splitlines()[-1].startswith("rfb_"), r.stderr
        host = os.path.join(tree, "host")
        shutil.copytree(os.path.join(ROOT, "tests", "data", "hosts", "gpu-a1"), host, symlinks=True)
        r = run("/usr/sbin/rocefab-agent", "--config", os.path.join(tree, "etc", "rocefab", "rocefab-agent.conf"),
                "--sysfs-root", host, "--id", "gpu-a1", "--once")
        assert r.returncode == 0 and '"gpu-a1"' in r.stdout, r.stderr
        r = run("/usr/bin/rocefabctl", "--help")
        assert r.returncode == 0 and "Commands:" in r.stdout
        r = run("/usr/bin/rocefab-sim", "--version")
        assert r.returncode == 0
        # an upgrade (the same packages again: preinst upgrade, postinst configure with the old
        # version) keeps an administrator's choice of the configuration's mode
        os.chmod(conf, 0o600)
        r = subprocess.run(dpkg + ["--install"] + list(d.values()), capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert os.stat(conf).st_mode & 0o7777 == 0o600
        status = subprocess.run(["dpkg", f"--root={tree}", "-l"], capture_output=True, text=True).stdout
        assert all(f"ii  {p} " in status for p in d), status
    finally:
        shutil.rmtree(tree, ignore_errors=True)
