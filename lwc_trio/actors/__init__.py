"""The Trio shell: transport, dispatcher, authorizer and plane-worker actors."""
