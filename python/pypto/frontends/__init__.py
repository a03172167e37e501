"""The front doors: ``@pypto.jit`` (jit), the tile level (tile), hw-native-sys pypto's language
(language/), PyAsc's element level (asc/) and the PTO-ISA API (isa/), each over the core layer."""
