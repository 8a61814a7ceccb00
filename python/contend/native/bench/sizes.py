"""Message-size lists as users write them: ``1,8,4KiB`` or a power-of-two range ``1:1MiB``."""

from __future__ import annotations

from contend.errors import UserError
from contend.machine.quantities import parse_bytes

MAX_MESSAGE = 1 << 30  # the harness's limit: MPI counts are int, buffers must fit in memory
MAX_SIZES = 64  # the harness's limit on sizes per run


def parse_sizes(text: str) -> list[int]:
    """Sizes in bytes, in the order given.

    >>> parse_sizes("1,64,4KiB")
    [1, 64, 4096]
    >>> parse_sizes("1KiB:8KiB")
    [1024, 2048, 4096, 8192]
    """
    sizes: list[int] = []
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            raise UserError(f"--sizes: empty item in {text!r}")
        if ":" in item:
            low_text, high_text = item.split(":", 1)
            low, high = parse_bytes(low_text, "--sizes"), parse_bytes(high_text, "--sizes")
            if not 1 <= low <= high:
                raise UserError(f"--sizes: range {item!r} must have 1 <= LOW <= HIGH")
            size = low
            while size <= high:
                sizes.append(size)
                size *= 2
        else:
            sizes.append(parse_bytes(item, "--sizes"))
    too_large = [s for s in sizes if s > MAX_MESSAGE]
    if too_large:
        raise UserError(f"--sizes: {too_large[0]} bytes is larger than the 1 GiB limit")
    if len(sizes) > MAX_SIZES:
        raise UserError(f"--sizes: {len(sizes)} sizes, at most {MAX_SIZES} per run")
    return sizes
