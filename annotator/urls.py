from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path

from annotator.views import home

urlpatterns = [
    path("", home.home, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("rubric/", home.rubric, name="rubric"),
    path("django-admin/", admin.site.urls),
]
