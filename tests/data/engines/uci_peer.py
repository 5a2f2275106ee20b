"""A tiny UCI engine for the tests of outside engines: a real protocol peer that misbehaves on
purpose. ``python uci_peer.py MODE``: ``crash`` exits with status 3 when asked to move, ``illegal``
answers a move no game allows, ``silent`` never answers ``go``, ``fixed:MOVE``
answers MOVE to every ``go``."""
import sys
import time

mode = sys.argv[1] if len(sys.argv) > 1 else "crash"
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    cmd = words[0]
    if cmd == "uci":
        print("id name uci_peer", flush=True)
        print("option name UCI_Variant type combo default chess var chess var breakthrough6x6", flush=True)
        print("uciok", flush=True)
    elif cmd == "isready":
        print("readyok", flush=True)
    elif cmd == "go":
        if mode == "crash":
            sys.exit(3)
        if mode == "silent":
            time.sleep(3600)
        if mode == "illegal":
            print("bestmove a1a6", flush=True)
        elif mode.startswith("fixed:"):
            print(f"bestmove {mode[6:]}", flush=True)
    elif cmd == "quit":
        break
