"""Gossip-built overlays (Feverfew, SCIS'14): the pieces that are pure arithmetic so far."""
