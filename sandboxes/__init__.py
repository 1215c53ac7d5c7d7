"""Sandbox backends (docker, bwrap, local) and image recipes, installed as agentrl.sandboxes."""
