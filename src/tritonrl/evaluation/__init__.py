"""Evaluation: sample a model on tasks, judge every sample, report (``tritonrl eval``, ``tritonrl report``).

``evaluate`` (the run), ``refinement`` (multi-turn repair), ``samples`` (``completions.jsonl``), ``metrics``
(pass@k, fast_p, funnel) and ``report`` (``report.json``, ``report.md``, plots). It never imports training.
"""
