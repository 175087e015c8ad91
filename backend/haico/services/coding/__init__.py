"""Coding: codebooks, codings of a step or a span of its text (blind until revealed),
agreement between coders, and pairwise judgments of sibling alternatives."""
