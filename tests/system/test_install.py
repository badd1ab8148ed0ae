"""`make install` as the README runs it, with the programs then run as the services' users
(setpriv to nobody:nogroup standing in for rocefab and rocefab-agent, the groups given to make
install): the configuration readable by them and by no one else, `token add` and
`rocefab-agent --once` working as those users, and the failure an operator would meet when
the configuration is not theirs said plainly."""
import grp
import os
import pwd
import shutil
import stat
import subprocess
import tempfile

import pytest

from conftest import BUILD, HOSTS, ROOT

NOBODY = pwd.getpwnam("nobody").pw_uid
NOGROUP = grp.getgrnam("nogroup").gr_gid


def as_service_user(*args, **kw):
    """A command as the service user would run it: no supplementary groups, no capabilities."""
    return subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOGROUP}", "--clear-groups",
                           "--inh-caps=-all", "--bounding-set=-all", "--"] + list(args),
                          capture_output=True, text=True, timeout=30, **kw)


@pytest.fixture(scope="module")
def top():
    """A directory the service user can reach (pytest's own is root's 0700)."""
    d = tempfile.mkdtemp(prefix="rocefab-install-")
    os.chmod(d, 0o755)
    yield __import__("pathlib").Path(d)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def installed(top):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv")
    dest = top / "root"
    # a copy of the build (mtimes kept): PREFIX=/usr rebuilds what compiles DATADIR in (as the
    # README's `make PREFIX=/usr` would), which must not touch the build the other tests run
    build = top / "build"
    build.mkdir()
    for sub in ("obj", "lib", "gen", "tools", "rocefabd", "rocefab-agent", "rocefabctl",
                "rocefab-sim", "rocefab-probe"):
        if os.path.exists(os.path.join(BUILD, sub)):
            subprocess.run(["cp", "-a", os.path.join(BUILD, sub), str(build)], check=True)
    r = subprocess.run(["make", "-s", "install", f"DESTDIR={dest}", "PREFIX=/usr", "SYSCONFDIR=/etc",
                        "DAEMON_GROUP=nogroup", "AGENT_GROUP=nogroup", f"B={build}"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    # the tree is root's, as under / (readable and searchable by all, as /usr and /etc are)
    for p, dirs, _ in os.walk(dest):
        os.chmod(p, 0o755)
    return dest


def test_the_configuration_is_the_services_and_no_one_elses(installed):
    for name in ("rocefabd.conf", "rocefab-agent.conf"):
        st = os.stat(installed / "etc" / "rocefab" / name)
        assert stat.S_IMODE(st.st_mode) == 0o640 and st.st_uid == 0 and st.st_gid == NOGROUP, (name, st)
    for path in ("usr/sbin/rocefabd", "usr/sbin/rocefab-agent", "usr/bin/rocefabctl",
                 "usr/share/bash-completion/completions/rocefabctl", "usr/share/zsh/vendor-completions/_rocefabctl",
                 "usr/share/rocefab/prometheus/rocefab.rules.yml", "usr/share/rocefab/grafana/rocefab-fabric.json",
                 "usr/share/man/man1/rocefabctl.1"):
        assert (installed / path).exists(), path
    # the installed daemon looks for its dashboard where make install put it (the build had
    # compiled /usr/local in: the README's `make` then `make install PREFIX=/usr` once gave a
    # daemon whose / was 404 NO_DASHBOARD)
    r = subprocess.run([str(installed / "usr/sbin/rocefabd"), "--help-config"], capture_output=True,
                       text=True, check=True)
    line = next(l for l in r.stdout.splitlines() if l.split()[:1] == ["api.web_root"])
    assert line.endswith("(default: /usr/share/rocefab/web)"), line
    assert (installed / "usr/share/rocefab/web/index.html").exists()


def test_a_second_install_keeps_the_configuration(installed, top):
    """make install again (an upgrade from source) keeps what the operator set: the release's
    example goes beside it as NAME.conf.new (it once overwrote /etc/rocefab/*.conf)."""
    conf = installed / "etc" / "rocefab" / "rocefabd.conf"
    mine = conf.read_text() + "\n# the operator's own\n"
    conf.write_text(mine)
    os.chown(conf, 0, 0)  # as left by an install before systemd-sysusers: root's group
    os.chmod(conf, 0o600)
    r = subprocess.run(["make", "-s", "install", f"DESTDIR={installed}", "PREFIX=/usr", "SYSCONFDIR=/etc",
                        "DAEMON_GROUP=nogroup", "AGENT_GROUP=nogroup", f"B={top / 'build'}"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert conf.read_text() == mine
    st = os.stat(conf)  # kept as it is, mode and group too
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_gid == 0, st
    assert f"kept {conf}; the example of this release is {conf}.new" in r.stderr, r.stderr
    assert f"{conf} is not group nogroup's: its service cannot read it" in r.stderr, r.stderr
    new = installed / "etc" / "rocefab" / "rocefabd.conf.new"
    with open(os.path.join(ROOT, "packaging", "rocefabd.conf")) as f:
        # with this install's paths: its web_root is where the dashboard went (uncommented as
        # /usr/local/share/... it turned the dashboard off)
        assert new.read_text() == f.read().replace("/usr/local/share/", "/usr/share/")
    assert "\n#web_root = /usr/share/rocefab/web\n" in new.read_text()
    st = os.stat(new)
    assert stat.S_IMODE(st.st_mode) == 0o640 and st.st_gid == NOGROUP, st
    for p, dirs, _ in os.walk(installed):
        os.chmod(p, 0o755)
    os.chown(conf, 0, NOGROUP)  # as the other tests expect it
    os.chmod(conf, 0o640)


def test_readme_steps_as_the_service_users(installed, top):
    tmp_path = top
    state = tmp_path / "var-lib-rocefab"
    state.mkdir()
    os.chown(state, NOBODY, NOGROUP)
    os.chmod(state, 0o700)
    conf = str(installed / "etc" / "rocefab" / "rocefabd.conf")
    daemon = str(installed / "usr" / "sbin" / "rocefabd")
    # sudo -u rocefab rocefabd --config /etc/rocefab/rocefabd.conf token add gpu-a1 --role agent ...
    r = as_service_user(daemon, "--config", conf, "-o", f"store.db={state}/rocefab.db", "token", "add", "gpu-a1",
                        "--role", "agent", "--agent", "gpu-a1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1].startswith("rfb_")
    r = as_service_user(daemon, "--config", conf, "-o", f"store.db={state}/rocefab.db", "token", "add", "ops",
                        "--role", "viewer")
    assert r.returncode == 0, r.stderr
    assert as_service_user(daemon, "--version").stdout.startswith("rocefabd ")
    # the agent, as its user, on a recorded host: rocefab-agent --once prints its report
    tree = tmp_path / "tree"
    shutil.copytree(os.path.join(HOSTS, "gpu-a1"), tree, symlinks=True)
    for p, dirs, files in os.walk(tree):
        os.chmod(p, 0o755)
    r = as_service_user(str(installed / "usr" / "sbin" / "rocefab-agent"), "--config",
                        str(installed / "etc" / "rocefab" / "rocefab-agent.conf"), "--sysfs-root", str(tree),
                        "--id", "gpu-a1", "--once")
    assert r.returncode == 0, r.stderr
    assert '"id":"gpu-a1"' in r.stdout.replace(" ", "")
    # a configuration the service's user cannot read: said, with the file
    os.chown(conf, 0, 0)
    try:
        r = as_service_user(daemon, "--config", conf, "--check")
        assert r.returncode == 2 and "CONF_UNREADABLE" in r.stderr and conf in r.stderr, r.stderr
    finally:
        os.chown(conf, 0, NOGROUP)
    assert as_service_user(daemon, "--config", conf, "--check").stdout.strip() == "configuration OK"
