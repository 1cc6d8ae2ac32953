"""Rappel (Patel, Rivière, Gupta, Kermarrec, ComNet'09): a friendship overlay of interest- and
network-close nodes, and one dissemination tree per feed (docs/readings/rappel.md, "The system")."""
