# The fixture of tests/ebpf_python.rs: a known hot function reached through three Python
# calls (outer -> middle -> hot), and a second, smaller path (side -> lukewarm), so that the
# shares compared with py-spy are not all 100 %. The work per call is a fixed number of loop
# iterations, so the split (about 70/30) is a property of the code, not of timing. A third,
# small path runs Python from C (sorted's key callback, a second activation of the interpreter
# loop) into a function with a non-ASCII name: via_c -> sorted -> cb -> clé.
import sys


def hot():
    x = 0
    for i in range(70_000):
        x += i * i
    return x


def middle():
    return hot()


def outer():
    return middle()


def lukewarm():
    x = 0
    for i in range(30_000):
        x += i ^ 5
    return x


def side():
    return lukewarm()


def clé():
    x = 0
    for i in range(200):
        x += i * 3
    return x


def cb(v):
    clé()
    return -v


def via_c():
    return sorted(range(50), key=cb)


def main():
    print("ready", flush=True)
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1e9
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        outer()
        side()
        via_c()


main()
