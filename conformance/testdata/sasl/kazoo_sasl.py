"""Log in to one ZooKeeper-compatible server with kazoo's SASL DIGEST-MD5.

Usage: /usr/bin/python3 kazoo_sasl.py HOST:PORT login|refused

login: user bob with his password creates /kazoo-sasl with ACL
sasl:bob:cdrwa and reads it back; a second client without SASL tries to
read it. refused: bob with a wrong password tries to connect. Prints
key=value lines for the Go test (TestSASL) to compare; it asserts nothing
itself. kazoo uses pure-sasl (Debian's python3-pure-sasl) for SASL.
"""

import sys
import time

from kazoo.client import KazooClient
from kazoo.security import make_acl

WAIT = 20.0  # seconds to connect; the Go side's eventTimeout


def attempt(call):
    """The call's result, or the name of the exception it raised."""
    try:
        return call()
    except Exception as err:  # noqa: BLE001 - the name is the observation
        return type(err).__name__


def client(addr, password):
    options = None
    if password is not None:
        options = {"mechanism": "DIGEST-MD5", "username": "bob", "password": password}
    return KazooClient(hosts=addr, sasl_options=options, connection_retry={"max_tries": 1})


def main():
    addr, mode = sys.argv[1], sys.argv[2]
    if mode == "refused":
        zk = client(addr, "wrong")
        states = []
        zk.add_listener(lambda s: states.append(str(s)))
        # kazoo reports CONNECTED before it runs SASL, so start returns;
        # the refusal comes after, as the client state AUTH_FAILED. But
        # start waits on an event the refusal clears again, and on a busy
        # machine the caller can wake after that and raise
        # KazooTimeoutError although the client did connect: what is
        # observed is whether it connected.
        # The connection thread moves the client through ZooKeeper's
        # states: AUTH_FAILED on the refusal and CLOSED a moment later, as
        # it stops. Sampling client_state in between would race it, so the
        # transitions are recorded and the client waited on until CLOSED.
        keeper = []
        session_callback = zk._session_callback

        def record(state):
            if not keeper or keeper[-1] != str(state):
                keeper.append(str(state))
            session_callback(state)

        zk._session_callback = record
        started = attempt(lambda: zk.start(timeout=WAIT))
        print("start=" + ("connected" if "CONNECTED" in states else str(started)))
        deadline = time.monotonic() + WAIT
        while zk.client_state != "CLOSED" and time.monotonic() < deadline:
            time.sleep(0.01)
        print("client_state=" + str(zk.client_state))
        print("keeper_states=" + ",".join(keeper))
        print("states=" + ",".join(states))
        print("exists=" + str(attempt(lambda: zk.exists("/"))))
        zk.stop()
        zk.close()
        print("done=true")
        return

    zk = client(addr, "bobsecret")
    zk.start(timeout=WAIT)
    acl = [make_acl("sasl", "bob", all=True)]
    print("create=" + attempt(lambda: zk.create("/kazoo-sasl", b"mine", acl=acl)))
    print("get=" + attempt(lambda: zk.get("/kazoo-sasl")[0].decode()))
    print("acl=" + attempt(lambda: repr(zk.get_acls("/kazoo-sasl")[0])))
    other = client(addr, None)
    other.start(timeout=WAIT)
    print("other.get=" + attempt(lambda: other.get("/kazoo-sasl")[0].decode()))
    other.stop()
    other.close()
    zk.stop()
    zk.close()
    print("done=true")


if __name__ == "__main__":
    main()
