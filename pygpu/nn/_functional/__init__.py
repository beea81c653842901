"""The functional forms of pygpu.nn, one file per family; pygpu.nn.functional
re-exports each file's __all__."""
