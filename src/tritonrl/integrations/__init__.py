"""Adapters for other trainers' reward APIs, around the one verifier and the one reward (docs/serving.md).

``verl``: a batched reward function for verl's batch reward manager, judged by a ``tritonrl serve`` service (or
in this process). OpenRLHF needs no adapter: its ``--remote_rm_url`` speaks the service's ``/v1/rewards``.
TRL: ``tritonrl.train.reward_adapters.VerifierReward`` with ``verify.backend: http``.
"""
