"""The Trio shell: the stdio and HTTP transports, the explore pipeline, the authorizer and
the plane-worker actors."""
