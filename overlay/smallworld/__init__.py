"""Small-world overlays (BeaConvey, DEBS'18 section 3): a ring of positions plus fingers."""
