"""The worker process beyond its activities: wiring, the run loop, the deletion watcher, health and metrics."""
