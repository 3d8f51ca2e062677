"""A small program profiled by the real Pyroscope Python SDK (pyroscope-io), for
tests/receive_http.rs: it burns CPU in `busy_work` for a few seconds, then shuts the SDK down,
which uploads what it collected.

    python app.py SERVER_ADDRESS APPLICATION_NAME SECONDS [TAG=VALUE ...]
"""

import inspect
import logging
import os
import sys
import time

import pyroscope


def busy_work():
    x = 0
    for i in range(100_000):
        x += i * i
    return x


def main():
    server, app, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    tags = dict(arg.split("=", 1) for arg in sys.argv[4:])
    verbose = os.environ.get("SDK_LOG") == "1"
    if verbose:
        logging.basicConfig(level=logging.DEBUG)
    options = dict(
        enable_logging=verbose,
        application_name=app,
        server_address=server,
        sample_rate=100,
        tags=tags,
    )
    end = time.time() + seconds
    # pyroscope-io 1.x uploads every upload_interval seconds. 0.8 uploads at every multiple
    # of 10 s of wall-clock time and at shutdown, but that last upload runs on a thread the
    # interpreter does not wait for: run past a 10 s boundary so that at least one upload
    # happens while the program is alive.
    if "upload_interval" in inspect.signature(pyroscope.configure).parameters:
        options["upload_interval"] = 1
    else:
        end = max(end, (time.time() // 10 + 1) * 10 + 2)
    pyroscope.configure(**options)
    while time.time() < end:
        busy_work()
    pyroscope.shutdown()
    # Give a final upload still in flight a moment before the interpreter exits.
    time.sleep(1)
    print("done", flush=True)


if __name__ == "__main__":
    main()
