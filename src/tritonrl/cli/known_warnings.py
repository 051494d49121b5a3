"""Library warnings known to be harmless here, silenced once when the ``tritonrl`` command starts.

Each entry is exact: the message's start, its category and the module that warns, with why it is harmless; any
other warning, from these libraries too, still shows. A library release that stops warning leaves its entry inert.
"""

from __future__ import annotations

import warnings

# (message regex, category, warning module regex, why it is harmless)
KNOWN = (
    (r"`is_gradient_checkpointing` is deprecated", FutureWarning, r"transformers\.modeling_utils",
     "TRL's GRPO/RLOO trainers read the old property at every step (transformers 5 renamed it "
     "is_activation_checkpointing); a TRL release that reads the new one ends it"),
)


def install() -> None:
    """Ignore each known warning (``warnings.filterwarnings``: message, category and module must all match)."""
    for message, category, module, _why in KNOWN:
        warnings.filterwarnings("ignore", message=message, category=category, module=module)
