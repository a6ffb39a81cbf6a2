"""What every binary estimator of the toolkit shares."""

from __future__ import annotations


class BinaryClassifierTags:
    """Mixin (put it before ClassifierMixin): declares the estimator binary-only, so that
    scikit-learn's checks expect 'Only binary classification is supported.' on 3+ classes."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
