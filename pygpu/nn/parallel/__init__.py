"""nn.parallel: DataParallel (one process, several devices) and
DistributedDataParallel (one process per rank, on pygpu.distributed)."""
from .data_parallel import (DataParallel, gather, parallel_apply, replicate,
                            scatter, scatter_kwargs)
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "scatter",
           "scatter_kwargs", "gather", "replicate", "parallel_apply"]
