"""Drive a server's TLS client port with kazoo and print JSON lines.

usage: kazoo_tls.py HOST:PORT CA_PEM CERT_PEM KEY_PEM
"""
import json
import sys

from kazoo.client import KazooClient
from kazoo.security import make_acl


def out(**kw):
    print(json.dumps(kw), flush=True)


def main():
    hosts, ca, cert, key = sys.argv[1:5]
    zk = KazooClient(hosts=hosts, timeout=10.0, use_ssl=True, ca=ca,
                     certfile=cert, keyfile=key, verify_certs=True)
    zk.start(timeout=30)
    try:
        out(op="create", path=zk.create("/kazoo-tls", b"over tls"))
        data, stat = zk.get("/kazoo-tls")
        out(op="get", data=data.decode(), version=stat.version)
        zk.create("/kazoo-tls-auth", b"a", acl=[make_acl("auth", "", all=True)])
        acls, _ = zk.get_acls("/kazoo-tls-auth")
        out(op="acl", acl=[f"{a.id.scheme}:{a.id.id}:{a.perms}" for a in acls])
    finally:
        zk.stop()
        zk.close()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # reported to the Go test as one line
        out(op="error", error=repr(e))
        sys.exit(1)
