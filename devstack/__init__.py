"""Local stand-ins for production services (Temporal dev server, moto, the simulator) and the stack that runs
them with a worker: used by the demo, the tests and the benchmarks, never by the worker in production.
"""
