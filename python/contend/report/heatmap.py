"""The link-load heatmap of ``contend sim --heatmap``: where on the network the bytes went.

A torus or mesh gets one panel per dimension and direction: each cell is a router at its coordinates,
coloured by the load of its link leaving in that direction, so a hot line or plane stands out where it
is. Dimension 0 runs left to right and dimension 1 top to bottom inside a block; higher dimensions
(z of a 3D torus) lay their blocks side by side. Other topologies have no such picture; they get, per
link class, the links sorted by load, which shows how uneven the load is and how many links are hot.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Sequence

from contend.report.plots import pyplot, save_figure

if TYPE_CHECKING:
    import numpy as np

    from contend.simulation.layout import NetworkLayout

# numpy is imported where it is used: `contend sim` reads METRICS for its options on every start-up.

METRICS = {"bytes": "bytes carried", "utilisation": "busy time / makespan"}


def link_heatmap(path: str | os.PathLike, frame, layout: NetworkLayout, *, metric: str = "bytes",
                 title: str = "link load") -> None:
    """Draw the links table ``frame`` (``SimulationResult.links``) of ``layout`` as a PNG."""
    if metric not in METRICS:
        raise ValueError(f"unknown heatmap metric {metric!r}; known: {', '.join(METRICS)}")
    values = frame[metric].to_numpy(dtype=float)
    if layout.is_grid and any(size > 1 for size in layout.dims):
        _grid_panels(path, values, layout, metric, title)
    else:
        _class_strips(path, values, layout, metric, title)


def grid_panels(values: np.ndarray, layout: NetworkLayout) -> dict[tuple[int, int], np.ndarray]:
    """Per (dimension, direction) with links, an image of the routers: rows = coordinate 1, columns =
    coordinate 0 within a block, blocks of the higher coordinates left to right with one blank column
    between them; NaN where a router has no such link (the edge of a mesh) and in the gaps."""
    import numpy as np

    dims = layout.dims
    width, height = dims[0], dims[1] if len(dims) > 1 else 1
    blocks = int(np.prod(dims[2:], dtype=np.int64)) if len(dims) > 2 else 1
    dimension, direction = layout.grid_directions()
    coords = layout.coordinates[layout.from_id]
    block = np.zeros(layout.num_links, dtype=np.int64)
    stride = 1
    for axis in range(2, len(dims)):  # the block of a router: its higher coordinates, mixed radix
        block += coords[:, axis] * stride
        stride *= dims[axis]
    column = block * (width + 1) + coords[:, 0]
    row = coords[:, 1] if len(dims) > 1 else np.zeros(layout.num_links, dtype=np.int64)
    panels = {}
    for axis, size in enumerate(dims):
        for sign in (1, -1):
            chosen = (dimension == axis) & (direction == sign)
            if size < 2 or not chosen.any():
                continue
            image = np.full((height, blocks * (width + 1) - 1), np.nan)
            image[row[chosen], column[chosen]] = values[chosen]
            panels[(axis, sign)] = image
    return panels


def _grid_panels(path, values: np.ndarray, layout: NetworkLayout, metric: str, title: str) -> None:
    import numpy as np

    plt = pyplot()
    panels = grid_panels(values, layout)
    names = _axis_names(len(layout.dims))
    top = max(float(np.nanmax(values)), 1e-12) if values.size else 1.0
    height, width = next(iter(panels.values())).shape
    cell = min(0.3, 10.0 / width)  # inches per router: the widest panel fits a 12-inch figure
    figure, axes = plt.subplots(len(panels), 1, figsize=(cell * width + 2.0, len(panels) * (cell * height + 0.35) + 1.0),
                                dpi=110, squeeze=False, layout="constrained")
    for ax, ((axis, sign), image) in zip(axes[:, 0], panels.items()):
        shown = ax.imshow(image, cmap="inferno", vmin=0, vmax=top, aspect="equal", interpolation="nearest")
        ax.set_ylabel(f"{names[axis]}{'+' if sign > 0 else '-'}", rotation=0, labelpad=14, fontsize="small")
        ax.set_xticks([])
        ax.set_yticks([])
    blocks = "" if len(layout.dims) < 3 else f"; blocks left to right: {', '.join(names[2:])} = 0, 1, ..."
    axes[0, 0].set_title(f"{title}: links leaving each router by direction\n({names[0]} across, "
                         f"{names[1] if len(names) > 1 else ''} down{blocks})", fontsize="medium")
    figure.colorbar(shown, ax=axes[:, 0].tolist(), label=METRICS[metric], shrink=0.8)
    save_figure(figure, path, tight=False)


def _class_strips(path, values: np.ndarray, layout: NetworkLayout, metric: str, title: str) -> None:
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    from contend.simulation.layout import LINK_CLASSES

    plt = pyplot()
    present = [code for code in range(len(LINK_CLASSES)) if (layout.link_class == code).any()]
    figure, axes = plt.subplots(len(present), 1, figsize=(8, 1.9 * len(present) + 0.8), dpi=110, squeeze=False)
    for ax, code in zip(axes[:, 0], present):
        loads = np.sort(values[layout.link_class == code])[::-1]
        ax.bar(np.arange(len(loads)), loads, width=1.0, color="#c0392b")
        ax.set_xlim(-0.5, len(loads) - 0.5)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # link ranks, not a continuous axis
        ax.set_ylabel(LINK_CLASSES[code], fontsize="small")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0, 0].set_title(f"{title}: {METRICS[metric]} per link, each class sorted by load", fontsize="medium")
    axes[-1, 0].set_xlabel("links, most loaded first")
    save_figure(figure, path)


def _axis_names(count: int) -> Sequence[str]:
    return ("x", "y", "z")[:count] if count <= 3 else [f"d{i}" for i in range(count)]
