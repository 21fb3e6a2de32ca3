"""The crowd-study feature: study, invite and sign-in links, enrolment, consent and instructions, crowd platforms, payments."""
