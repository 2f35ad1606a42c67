"""Worker-to-worker transports for hgbt.dask's ring, measured side by side.

    python benchmarks/collective_transport.py [--bytes 71680 143360] [--exchanges 2000]

Two processes exchange a buffer of ``--bytes`` (a 28-feature, 256-bin
histogram is 143,360 bytes; half of it, one reduce-scatter step between two
workers, 71,680), each sending its own while receiving the other's, as one
step of the ring does, ``--exchanges`` times. Reported per exchange: the wall
time and the CPU time of one process (user + system), median of the two.

- ``sockets``: ``hgbt.dask._ring`` (standard-library TCP sockets, non-blocking,
  a selector; what the ring uses);
- ``dask comm``: Distributed's own TCP comms (``distributed.comm.listen`` /
  ``connect``, the transport between Dask workers), each process running an
  asyncio loop, messages ``{"data": to_serialize(ndarray)}`` written and read concurrently.

Prints a Markdown table; the ring's choice is recorded in RESULTS.md,
"Worker-to-worker collectives".
"""
import argparse
import asyncio
import multiprocessing as mp
import resource
import time

import numpy as np


def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def sockets_side(rank, ports, addresses, results, n_bytes, n):
    from hgbt.dask._ring import join_ring, listen

    server, port = listen("127.0.0.1")
    ports.put((rank, port))
    ring = join_ring(rank, addresses.get(), server, 1, 30.0)
    out = np.ones(n_bytes, dtype=np.uint8)
    into = np.empty(n_bytes, dtype=np.uint8)
    for _ in range(50):  # warm-up
        ring._exchange(memoryview(out), memoryview(into))
    cpu, start = _cpu(), time.perf_counter()
    for _ in range(n):
        ring._exchange(memoryview(out), memoryview(into))
    results.put((time.perf_counter() - start, _cpu() - cpu))
    ring.close()


def dask_side(rank, ports, addresses, results, n_bytes, n):
    from distributed.comm import connect, listen
    from distributed.protocol import to_serialize

    async def main():
        inbox = asyncio.Queue()

        async def handle(comm):
            while True:
                try:
                    await inbox.put(await comm.read())
                except Exception:
                    return

        listener = listen("tcp://127.0.0.1:0", handle)
        await listener.start()
        ports.put((rank, listener.contact_address))
        peer = await connect(addresses.get()[1 - rank])
        # as Dask ships arrays between workers: serialized frames, not a pickle
        out = {"data": to_serialize(np.ones(n_bytes, dtype=np.uint8))}

        async def exchange():
            await peer.write(out)
            return await inbox.get()

        for _ in range(50):
            await exchange()
        cpu, start = _cpu(), time.perf_counter()
        for _ in range(n):
            await exchange()
        results.put((time.perf_counter() - start, _cpu() - cpu))
        await asyncio.sleep(0.2)  # the peer's last read
        await peer.close()
        listener.stop()

    asyncio.run(main())


def measure(side, n_bytes, n):
    ports, results = mp.Queue(), mp.Queue()
    addresses = [mp.Queue(), mp.Queue()]
    procs = [mp.Process(target=side, args=(r, ports, addresses[r], results, n_bytes, n))
             for r in range(2)]
    for p in procs:
        p.start()
    got = dict(ports.get() for _ in range(2))
    where = ([("127.0.0.1", got[0]), ("127.0.0.1", got[1])] if side is sockets_side
             else [got[0], got[1]])
    for q in addresses:
        q.put(where)
    out = [results.get() for _ in range(2)]
    for p in procs:
        p.join()
    wall = float(np.median([w for w, _ in out])) / n
    cpu = float(np.median([c for _, c in out])) / n
    return wall, cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bytes", type=int, nargs="+", default=[120, 71_680, 143_360])
    parser.add_argument("--exchanges", type=int, default=2000)
    args = parser.parse_args()
    print("| bytes each way | transport | wall µs per exchange | CPU µs per exchange |")
    print("|---:|---|---:|---:|")
    for n_bytes in args.bytes:
        for name, side in (("sockets (hgbt.dask._ring)", sockets_side),
                           ("dask comm (distributed.comm, TCP)", dask_side)):
            wall, cpu = measure(side, n_bytes, args.exchanges)
            print(f"| {n_bytes:,} | {name} | {wall * 1e6:.0f} | {cpu * 1e6:.0f} |", flush=True)


if __name__ == "__main__":
    main()
