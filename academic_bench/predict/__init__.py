"""The study's predictions, below the answer that composes them (``answer/``): how many days a configuration the
study did not measure would take, from what it did measure, and how far such predictions have been off.

| module | holds |
| --- | --- |
| ``measured`` | the measured answer per setup and model (days only where its search is complete) |
| ``transfer`` | a measured step carried to another GPU or GPU count, part by part |
| ``method_costs`` | what each memory-saving method and each GPU beyond the first adds to a step |
| ``offload_phases`` | the phases as evidence for the offloading copies a step carries per micro-step |
| ``other_methods`` | a measured configuration re-priced to other memory-saving methods |
| ``decoder_work`` | the step of a decoder outside the catalog from the kinds of work its shape implies |
| ``work_units`` | the units of work of a decoder's step, per kind of GPU work, counted from its shape |
| ``work_evidence`` | what the work model reads besides the profiles (GEMM sweep, attention, optima) |
| ``switch_work``, ``switch_fit`` | what the switches beyond the paper change in the work model's step |
| ``transfer_validation`` | the transfer model checked against held-out runs; a prediction's source |
| ``work_validation`` | the work model checked against the decoders measured after their estimate was kept |
| ``ranges`` | a predicted answer's range: the error the study observed for predictions of its kind |
| ``published_family`` | published points per family and generation, predicted from a catalog model |

The published check itself (``answer.published_check``) stays in ``answer/``: it sets the study's answers (a
config.json decoder's among them, ``answer.decoder``) beside the published points, so it reads the answer.
"""
