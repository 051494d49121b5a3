"""What task generation, evaluation and training share, below all three and above the verifier.

The run's stages and manifest (``stages``, ``manifest``), model loading (``llm``) and sampling
(``generation``), process ranks and stop signals (``ranks``, ``signals``), prompts (``prompts``), the reward
(``reward``: a verdict -> float) and the verdict stream with its ``results.jsonl`` rows (``result_log``).
Nothing here imports ``tritonrl.train``, ``tritonrl.evaluation``, ``tritonrl.taskgen`` or the pipeline
(``tests/test_layers.py``).
"""
