# The fixture of tests/ebpf_python_callbacks.rs: nearly all of its time is spent entering and
# leaving the interpreter loop from C (a builtin calling a Python function back), through
# several C paths with different C stack depths, so that samples land in the instructions
# where CPython 3.11 and 3.12 have made the new activation current (`tstate->cframe`) before
# giving it its frame (`cframe.current_frame`): the C stack slot then still holds whatever an
# earlier call left there. The Python call graph is fixed, so any stack whose frames are not
# nested as below was read wrong.
#
#   <module> -> main -> by_sort   -> sorted  -> key     -> leaf
#                    -> by_map    -> map     -> key     -> leaf
#                    -> by_reduce -> reduce  -> add
#                    -> by_min    -> min     -> key     -> leaf
#                    -> nested    -> sorted  -> inner   -> sorted -> key -> leaf
import functools
import sys


def leaf(v):
    return v


def key(v):
    return leaf(v)


def add(a, b):
    return a + b


def inner(v):
    return sorted((v, 1, 2), key=key)[0]


def by_sort():
    return sorted(range(64), key=key)


def by_map():
    return list(map(key, range(64)))


def by_reduce():
    return functools.reduce(add, range(64))


def by_min():
    return min(range(64), key=key)


def nested():
    return sorted(range(16), key=inner)


def main():
    print("ready", flush=True)
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1e9
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        by_sort()
        by_map()
        by_reduce()
        by_min()
        nested()


main()
