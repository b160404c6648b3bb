# hutch's shim between kazoo's upstream tests (copied here unchanged) and
# the kazoo installed for /usr/bin/python3 (Debian's python3-kazoo 2.8,
# whose harness and test helpers are older than the tests):
#
# - kazoo.tests.util gets the names upstream's has (CI, CI_ZK_VERSION),
#   defined as upstream defines them;
# - ZOOKEEPER_LOCAL_SESSION_RO=true adds localSessionsEnabled and
#   localSessionsUpgradingEnabled to every server's zoo.cfg, as upstream's
#   harness does;
# - with HUTCH_BIN set, each server the harness starts with
#   "java ... QuorumPeerMain zoo.cfg" runs as "hutch zoo.cfg" instead: the
#   harness's Java system properties become hutch's flags
#   (readonlymode.enabled, the super digest, the JAAS file),
#   HUTCH_PEER_SECRET_FILE is the secret the members share, and the client
#   and admin ports listen on loopback. The harness's zoo.cfg, ports, stop
#   and restart are untouched.
import os
import subprocess

import kazoo.testing.common as common
import kazoo.tests.util as util

util.CI = os.environ.get("CI", False)
util.CI_ZK_VERSION = util.CI and os.environ.get("ZOOKEEPER_VERSION", None)
if util.CI_ZK_VERSION:
    if "-" in util.CI_ZK_VERSION:
        util.CI_ZK_VERSION = util.CI_ZK_VERSION.split("-")[0]
    util.CI_ZK_VERSION = tuple(int(n) for n in util.CI_ZK_VERSION.split("."))

_run = common.ManagedZooKeeper.run


def _run_with_local_sessions(self):
    if os.environ.get("ZOOKEEPER_LOCAL_SESSION_RO") == "true":
        entries = list(self.configuration_entries)
        for e in ("localSessionsEnabled=true", "localSessionsUpgradingEnabled=true"):
            if e not in entries:
                entries.append(e)
        self.configuration_entries = entries
    return _run(self)


common.ManagedZooKeeper.run = _run_with_local_sessions


def _hutch_args(args):
    """The hutch command line for the harness's java command line. The
    client and admin ports listen on loopback only (the harness's zoo.cfg
    names no address, which is every interface)."""
    cfg = {}
    with open(args[-1]) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            cfg[k] = v
    cmd = [os.environ["HUTCH_BIN"], args[-1],
           "--peer-secret-file", os.environ["HUTCH_PEER_SECRET_FILE"],
           "--listen", "127.0.0.1:" + cfg["clientPort"]]
    if "admin.serverPort" in cfg:
        cmd += ["--admin-listen", "127.0.0.1:" + cfg["admin.serverPort"]]
    for a in args:
        if a == "-Dreadonlymode.enabled=true":
            cmd.append("--read-only-mode")
        elif a.startswith("-Dzookeeper.DigestAuthenticationProvider.superDigest="):
            cmd += ["--super-digest", a.split("=", 1)[1]]
        elif a.startswith("-Djava.security.auth.login.config="):
            path = a.split("=", 1)[1]
            if os.path.getsize(path) > 0:
                cmd += ["--jaas-file", path]
    return cmd


class _Subprocess(object):
    """subprocess for kazoo's harness, starting hutch for java."""

    def __getattr__(self, name):
        return getattr(subprocess, name)

    def Popen(self, args, **kw):
        if not os.environ.get("HUTCH_BIN") or not args or args[0] != "java":
            return subprocess.Popen(args=args, **kw)
        cmd = _hutch_args(args)
        logdir = os.environ.get("HUTCH_LOG_DIR") or os.path.dirname(args[-1])
        port = cmd[cmd.index("--listen") + 1].rsplit(":", 1)[1]
        log = open(os.path.join(logdir, "hutch-%s.log" % port), "ab")
        kw.setdefault("stdout", log)
        kw.setdefault("stderr", log)
        return subprocess.Popen(args=cmd, **kw)


common.subprocess = _Subprocess()
