"""Clients of the world outside the worker: Kubernetes, the EC2 cloud provider, instance-type discovery and prices,
the SQS interruption queue. Activities and the runtime take them by injection; nothing else calls those services."""
