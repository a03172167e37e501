"""A rank started by MPI's launcher (``mpi_pool.start_ranks``): ``python -m pypto.dist.mpi_rank``.
It connects back to the orchestrator, starts its host's engine and serves jobs as any rank does."""

from __future__ import annotations

import os
import socket
import sys


def main() -> int:
    from mpi4py import rc

    rc.thread_level = "multiple"  # the engine's service thread and the runtime's workers both send
    from mpi4py import MPI

    import multiprocessing.connection as mpc
    import multiprocessing.spawn as mp_spawn

    from . import launcher
    from .engine import Engine, hosts_from_env

    comm = MPI.COMM_WORLD
    rank, nranks = comm.Get_rank(), comm.Get_size()
    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        print(f"pypto: rank {rank}: this MPI gives no MPI_THREAD_MULTIPLE, which the engine needs", file=sys.stderr)
        return 70
    address = os.environ["PYPTO_DIST_ADDRESS"]
    if ":" in address and not address.startswith("/"):
        host, _, port = address.rpartition(":")
        addr: object = (host, int(port))
    else:
        addr = address
    conn = mpc.Client(addr, authkey=bytes.fromhex(os.environ["PYPTO_DIST_AUTHKEY"]))
    conn.send(("hello", rank, os.getpid(), socket.gethostname()))
    mp_spawn.prepare(conn.recv())  # the orchestrator's sys.path and main module, as a spawned process
    launcher._die_with_parent()
    engine = Engine(comm, hosts_from_env(), os.environ.get("PYPTO_DIST_PLACEMENT", "simulated"))
    try:
        launcher.serve(rank, nranks, conn, len(engine.host_ranks), engine)
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
