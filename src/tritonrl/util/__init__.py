"""Utilities with no knowledge of tasks, models or verdicts: ``atomic`` writes, ``jsonl``, ``yamlfile``,
``astlock`` (one lock around ``ast``), ``render`` (numbers, Markdown tables, pyplot for reports)."""
