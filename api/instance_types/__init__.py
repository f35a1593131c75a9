"""Instance types as Karpenter's AWS provider sees them: from DescribeInstanceTypes to the catalog model and its
well-known labels (docs/semantics.md "Instance types and allocatable")."""
