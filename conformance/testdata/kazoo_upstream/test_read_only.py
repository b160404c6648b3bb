# TestReadOnlyMode from kazoo's own test suite, copied unchanged from
# https://github.com/python-zk/kazoo, kazoo/tests/test_connection.py at
# commit 4476a3b7338656c9a1ed89f255f20d80cb0f630b (Apache License 2.0,
# see LICENSE here), with the imports it uses. hutch's conformance tests
# run it against a three-member hutch ensemble (conftest.py starts hutch
# where kazoo's harness starts ZooKeeper); nothing here is hutch's.
import os
import threading
import time

import pytest

from kazoo.testing import KazooTestCase
from kazoo.tests.util import CI_ZK_VERSION, CI


class TestReadOnlyMode(KazooTestCase):
    def setUp(self):
        os.environ["ZOOKEEPER_LOCAL_SESSION_RO"] = "true"
        self.setup_zookeeper()
        skip = False
        if CI_ZK_VERSION and CI_ZK_VERSION < (3, 4):
            skip = True
        elif CI_ZK_VERSION and CI_ZK_VERSION >= (3, 4):
            skip = False
        else:
            ver = self.client.server_version()
            if ver[1] < 4:
                skip = True
        if skip:
            pytest.skip("Must use Zookeeper 3.4 or above")

    def tearDown(self):
        self.client.stop()
        os.environ.pop("ZOOKEEPER_LOCAL_SESSION_RO", None)

    def test_read_only(self):
        from kazoo.exceptions import NotReadOnlyCallError
        from kazoo.protocol.states import KeeperState

        if CI:
            # force some wait to make sure the data produced during the
            # `setUp()` step are replicaed to all zk members
            # if not done the `get_children()` test may fail because the
            # node does not exist on the node that we will keep alive
            time.sleep(15)
        # do not keep the client started in the `setUp` step alive
        self.client.stop()
        client = self._get_client(connection_retry=None, read_only=True)
        states = []
        ev = threading.Event()

        @client.add_listener
        def listen(state):
            states.append(state)
            if client.client_state == KeeperState.CONNECTED_RO:
                ev.set()

        client.start()
        try:
            # stopping both nodes at the same time
            # else the test seems flaky when on CI hosts
            zk_stop_threads = []
            zk_stop_threads.append(
                threading.Thread(target=self.cluster[1].stop, daemon=True)
            )
            zk_stop_threads.append(
                threading.Thread(target=self.cluster[2].stop, daemon=True)
            )
            for thread in zk_stop_threads:
                thread.start()
            for thread in zk_stop_threads:
                thread.join()
            # stopping the client is *mandatory*, else the client might try to
            # reconnect using a xid that the server may endlessly refuse
            # restarting the client makes sure the xid gets reset
            client.stop()
            client.start()
            ev.wait(15)
            assert ev.is_set()
            assert client.client_state == KeeperState.CONNECTED_RO

            # Test read only command
            assert client.get_children("/") == []

            # Test error with write command
            with pytest.raises(NotReadOnlyCallError):
                client.create("/fred")

            # Wait for a ping
            time.sleep(15)
        finally:
            client.remove_listener(listen)
            self.cluster[1].run()
            self.cluster[2].run()
