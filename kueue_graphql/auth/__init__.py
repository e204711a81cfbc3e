"""Who is calling: bearer token -> TokenReview -> Identity, or the kubeconfig's own identity."""

from kueue_graphql.auth.authenticators import (
    Authenticator,
    LocalAuthenticator,
    TokenReviewAuthenticator,
    bearer_token,
)

__all__ = ["Authenticator", "LocalAuthenticator", "TokenReviewAuthenticator", "bearer_token"]
