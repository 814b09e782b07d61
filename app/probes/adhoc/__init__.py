"""The ad-hoc connping, ociping and sweep commands: rwloadsim's options, lines and CSV."""
