"""node-scale-adjuster: whole-GPU scaling pods that make autoscalers add GPU nodes for
pending fractional-GPU pods (docs/semantics.md §7).

Why: cluster-autoscaler and Karpenter simulate a pending pod against node templates,
and a pod asking for half a GPU through an annotation asks for no ``nvidia.com/gpu``
at all, so no scale-up would ever help it. The decisions are pure (``deciding``);
``reconciler`` watches pods and writes them; ``flags`` holds the command line.
"""
