# SPDX-License-Identifier: Apache-2.0
"""The thesis's experiments, MODELLED on the phone profiles (docs/experiments.md): :mod:`.llm`
(prefill and decode of the LLM configurations against TVM's CPU backend) and :mod:`.precision`
(CV networks per precision, relaxed and W8A8 LLM prefill). ``bench/llm_experiments.py`` and
``bench/precision_experiments.py`` run them and write the docs' tables."""
